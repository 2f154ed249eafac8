export { type WeatherApp, type WeatherAppOptions, createWeatherApp } from './app.js';
export { apiKeyAuth } from './auth.js';
export { runPrimary, runWorker } from './cluster.js';
export { type WeatherServiceConfig, loadConfig, readConfig } from './config.js';
