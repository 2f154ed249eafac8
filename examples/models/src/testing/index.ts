export {
  type ContainerCommand,
  type DockerInstruction,
  type ParsedDockerfile,
  type RunningContainer,
  parseDockerfile,
  parseEnvInstruction,
  readContainerCommand,
  startContainerCommand,
} from './container-command.js';
