export {
  type ContainerCommand,
  type DockerInstruction,
  type ImageExpectations,
  type ParsedDockerfile,
  type RunningContainer,
  checkDockerfile,
  exampleDockerfile,
  parseDockerfile,
  parseEnvInstruction,
  readContainerCommand,
  startContainerCommand,
} from './container-command.js';
export {
  NO_TELEMETRY_EXPORT,
  type StartedExample,
  listenKoa,
  loggedOfflineNotice,
  useExampleContainers,
} from './example-harness.js';
