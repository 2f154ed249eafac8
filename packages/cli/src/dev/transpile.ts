// The hot reload's build: each changed TypeScript source of an agent transpiled on its own with
// the agent's tsconfig (TypeScript's transpileModule: syntax, not types — the editor and `tsc -b`
// check those) into the file `tsc -b` would write, so a save costs milliseconds, not a project build.
import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type ts from 'typescript';

/** Sources that do not build: every file's syntax errors, as `file:line:col message` lines. */
export class BuildError extends Error {
  override name = 'BuildError';
}

export interface AgentBuild {
  /** The folder of sources it watches (the tsconfig's rootDir). */
  rootDir: string;
  /** Transpiles these sources (absolute paths); throws BuildError, writing nothing, if any fails. */
  build(files: readonly string[]): Promise<string[]>;
}

/**
 * Reads the agent's tsconfig.json (extends included) once. TypeScript is loaded here, not with the
 * CLI: only `agentrt dev` in a checkout (where it is installed) rebuilds agents.
 */
export async function createAgentBuild(agentDir: string): Promise<AgentBuild> {
  const { default: typescript } = await import('typescript');
  const configFile = join(agentDir, 'tsconfig.json');
  const parsed = typescript.getParsedCommandLineOfConfigFile(
    configFile,
    {},
    {
      ...typescript.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new BuildError(typescript.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!parsed) throw new BuildError(`cannot read ${configFile}`);
  // Files are transpiled one by one, so the package's module format is told, not looked up
  // (NodeNext would otherwise emit CommonJS for an ES module package).
  const esm = packageType(agentDir) === 'module';
  const options: ts.CompilerOptions = {
    ...parsed.options,
    module: esm ? typescript.ModuleKind.ESNext : typescript.ModuleKind.CommonJS,
    moduleResolution: esm ? typescript.ModuleResolutionKind.Bundler : typescript.ModuleResolutionKind.Node10,
    sourceMap: false,
    declaration: false,
    declarationMap: false,
  };
  const rootDir = options.rootDir ?? join(agentDir, 'src');
  const outDir = options.outDir ?? join(agentDir, 'dist');
  const outputOf = (file: string): string =>
    join(outDir, relative(rootDir, file)).replace(/\.([mc]?)tsx?$/, (_, m: string) => `.${m}js`);
  return {
    rootDir,
    async build(files) {
      const outputs: { path: string; text: string }[] = [];
      const problems: string[] = [];
      for (const file of files) {
        const out = typescript.transpileModule(await readFile(file, 'utf8'), {
          compilerOptions: options,
          fileName: file,
          reportDiagnostics: true,
        });
        for (const d of out.diagnostics ?? []) problems.push(describe(typescript, d, agentDir));
        outputs.push({ path: outputOf(file), text: out.outputText });
      }
      if (problems.length) throw new BuildError(problems.join('\n'));
      for (const o of outputs) {
        await mkdir(dirname(o.path), { recursive: true });
        await writeFile(o.path, o.text);
      }
      return outputs.map((o) => o.path);
    },
  };
}

function packageType(agentDir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(agentDir, 'package.json'), 'utf8')) as { type?: string }).type;
  } catch {
    return undefined; // no package.json: CommonJS, as Node reads it
  }
}

function describe(typescript: typeof ts, d: ts.Diagnostic, base: string): string {
  const message = typescript.flattenDiagnosticMessageText(d.messageText, '\n');
  if (!d.file || d.start === undefined) return message;
  const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
  return `${relative(base, d.file.fileName)}:${line + 1}:${character + 1} ${message}`;
}
