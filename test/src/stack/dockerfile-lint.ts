import { DockerfileParser, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';

export interface DockerfileLintOptions {
  /** Stages that become images (`--target`); default: the last stage. */
  targets?: string[];
  /** Targets whose health check lives in docker-compose.yml rather than in a HEALTHCHECK line. */
  composeHealthchecks?: string[];
}

interface Stage {
  name: string;
  line: number;
  instructions: Instruction[];
}

const ROOT_USERS = new Set(['root', '0', '0:0', 'root:root']);

/**
 * Checks a Dockerfile against the rules our images follow: it parses (dockerfile-utils' own
 * validation finds no error or warning), is multi-stage, pins every base image to a version, never hard-codes
 * a platform (only $BUILDPLATFORM / $TARGETPLATFORM), never ADDs a URL, and every image it produces
 * runs as a non-root USER, EXPOSEs its port and has a HEALTHCHECK (or one in compose).
 * Returns the problems found, one readable line each; empty when the file is clean.
 */
export function lintDockerfile(text: string, options: DockerfileLintOptions = {}): string[] {
  const problems: string[] = [];
  // dockerfile-utils reports LSP diagnostics: severity 1 is an error, 2 a warning; both count here.
  for (const d of validate(text)) {
    if (d.severity === 1 || d.severity === 2) problems.push(`line ${d.range.start.line + 1}: ${d.message}`);
  }
  const dockerfile = DockerfileParser.parse(text);
  const froms = dockerfile.getFROMs();
  const instructions = dockerfile.getInstructions();
  const stages: Stage[] = froms.map((from, index) => {
    const line = from.getRange().start.line;
    const nextLine = froms[index + 1]?.getRange().start.line ?? Number.POSITIVE_INFINITY;
    return {
      name: from.getBuildStage() ?? String(index),
      line: line + 1,
      instructions: instructions.filter((i) => {
        const at = i.getRange().start.line;
        return at > line && at < nextLine;
      }),
    };
  });
  if (froms.length < 2) problems.push('not multi-stage: build in one stage, run in a smaller one');

  const stageNames = new Set<string>();
  for (const from of froms) {
    const image = from.getImage() ?? '';
    const at = `line ${from.getRange().start.line + 1}`;
    if (!stageNames.has(image)) {
      const tag = from.getImageTag();
      const digest = from.getImageDigest();
      if (!digest && (!tag || tag === 'latest' || !/\d/.test(tag))) {
        problems.push(`${at}: base image ${image} is not pinned to a version tag or digest`);
      }
    }
    const platform = from.getPlatformFlag()?.getValue();
    if (platform && !/^\$\{?(BUILDPLATFORM|TARGETPLATFORM)\}?$/.test(platform)) {
      problems.push(`${at}: --platform=${platform} is hard-coded; use $BUILDPLATFORM or leave it out`);
    }
    const name = from.getBuildStage();
    if (name) stageNames.add(name);
  }

  for (const add of instructions.filter((i) => i.getKeyword() === 'ADD')) {
    if (add.getArguments().some((a) => /^[a-z]+:\/\//i.test(a.getValue()))) {
      problems.push(
        `line ${add.getRange().start.line + 1}: ADD of a URL; download in a RUN step with a checksum`,
      );
    }
  }

  const targets = options.targets ?? [stages.at(-1)?.name ?? ''];
  for (const target of targets) {
    const stage = stages.find((s) => s.name === target);
    if (!stage) {
      problems.push(`target stage '${target}' does not exist`);
      continue;
    }
    const has = (keyword: string) => stage.instructions.filter((i) => i.getKeyword() === keyword);
    const user = has('USER').at(-1)?.getArgumentsContent()?.trim();
    if (!user || ROOT_USERS.has(user)) {
      problems.push(`stage '${target}' (line ${stage.line}) runs as root: add a USER that is not root`);
    }
    if (has('EXPOSE').length === 0) {
      problems.push(`stage '${target}' (line ${stage.line}) does not EXPOSE its port`);
    }
    if (has('HEALTHCHECK').length === 0 && !options.composeHealthchecks?.includes(target)) {
      problems.push(`stage '${target}' (line ${stage.line}) has no HEALTHCHECK`);
    }
  }
  return problems;
}
