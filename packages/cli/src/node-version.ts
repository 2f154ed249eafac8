// Imported by bin.js before anything else of the CLI, so it stays free of imports that need a newer
// Node (node:sqlite) and of syntax Node 18 cannot parse.
import { cliPackage } from './cli-package.js';

const floor = /^>=\s*(\d+)\.(\d+)/.exec(cliPackage.engines.node.trim());
if (!floor) throw new Error(`engines.node of @agentrt/cli is not ">=X.Y": ${cliPackage.engines.node}`);
const [floorMajor, floorMinor] = [Number(floor[1]), Number(floor[2])];

/** The oldest Node.js agentrt runs on: the engines range of its package.json (`>=22.15`). */
export const NODE_FLOOR = `${floorMajor}.${floorMinor}`;

/** Why this Node.js cannot run agentrt, or undefined when it can. */
export function nodeVersionProblem(version: string = process.versions.node): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > floorMajor || (major === floorMajor && minor >= floorMinor)) return undefined;
  return `node v${version} is older than ${NODE_FLOOR}, which agentrt needs (node:sqlite)`;
}
