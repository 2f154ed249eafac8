// The control row of bench/instrument's throughput table: no telemetry at all, only a fixed amount
// of CPU work (BENCH_BUSY_US, default 3 µs of busy-waiting) before each HTTP request is handled.
// It shows what a few microseconds per request cost on this machine's echo server, the yardstick
// for the telemetry rows beside it.
import http from 'node:http';

const busyMs = Number(process.env.BENCH_BUSY_US ?? 3) / 1000;
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, ...args) {
  if (event === 'request') {
    const until = performance.now() + busyMs;
    while (performance.now() < until);
  }
  return emit.call(this, event, ...args);
};
