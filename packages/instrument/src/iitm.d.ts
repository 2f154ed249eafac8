// import-in-the-middle ships no types for this entry point.
declare module 'import-in-the-middle/supports-sync-hooks.mjs' {
  export function supportsSyncHooks(): boolean;
}
