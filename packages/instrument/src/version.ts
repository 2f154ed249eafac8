/** The launcher's version, reported as `telemetry.distro.version`. Kept in step with package.json. */
export const VERSION = '0.1.0';
