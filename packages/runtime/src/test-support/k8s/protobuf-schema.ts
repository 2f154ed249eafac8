// The Kubernetes protobuf messages the test API server decodes: the kinds kubectl v1.32 sends as
// `application/vnd.kubernetes.protobuf` (its `create namespace|configmap|secret|serviceaccount|
// role|rolebinding|service|deployment|quota|poddisruptionbudget` generators; `apply` and
// `create -f` send JSON) and the messages inside them. Field numbers are those of the real
// generated.proto files: kubernetes/api@10b39a39 (core/v1, apps/v1, rbac/v1, policy/v1) and
// kubernetes/apimachinery@eed236ce (apis/meta/v1, runtime, util/intstr, api/resource); a field
// number never changes once released.
//
// A field is `json=number[:type]`. Types: string (default), int, bool, bytes, time (meta/v1 Time:
// RFC 3339, or null when zero), quantity (resource.Quantity as its string), intstr (IntOrString as a
// number or string), a message name, `[T]` repeated, `map` (string → string) or `map:T`. A trailing
// `!` keeps the field when zero: a pointer in the Go type, or a JSON tag without omitempty; other
// zero scalars are dropped as Go's encoding/json drops them (omitempty). Messages present on the
// wire are kept even when empty (Go marshals a struct field as `{}` either way).

export type FieldType =
  'string' | 'int' | 'bool' | 'bytes' | 'time' | 'quantity' | 'intstr' | { message: string };

export interface Field {
  json: string;
  type: FieldType;
  repeated: boolean;
  /** A map<string, T>: the value type. */
  map?: FieldType | undefined;
  keepZero: boolean;
}

const SCALARS = new Set(['string', 'int', 'bool', 'bytes', 'time', 'quantity', 'intstr']);

function typeOf(name: string): FieldType {
  return SCALARS.has(name) ? (name as FieldType) : { message: name };
}

/** `name=1 generation=7:int labels=11:map` → field number → Field. */
function fields(spec: string): Map<number, Field> {
  const out = new Map<number, Field>();
  for (const token of spec.split(/\s+/).filter(Boolean)) {
    const match = /^(\w+)=(\d+)(?::(\S+?))?(!)?$/.exec(token);
    if (!match) throw new Error(`protobuf schema: bad field ${token}`);
    const [, json, number, raw = 'string', bang] = match as unknown as [
      string,
      string,
      string,
      string?,
      string?,
    ];
    const repeated = raw.startsWith('[');
    const isMap = raw === 'map' || raw.startsWith('map:');
    const inner = repeated ? raw.slice(1, -1) : raw;
    out.set(Number(number), {
      json,
      type: isMap ? { message: 'map' } : typeOf(inner),
      repeated: repeated || isMap,
      map: isMap ? typeOf(raw === 'map' ? 'string' : raw.slice(4)) : undefined,
      keepZero: bang === '!',
    });
  }
  return out;
}

const META = 'metadata=1:ObjectMeta';

/** Message name → its fields. */
export const MESSAGES: Record<string, Map<number, Field>> = {
  // apimachinery runtime/generated.proto
  Unknown: fields('typeMeta=1:TypeMeta raw=2:bytes contentEncoding=3 contentType=4'),
  TypeMeta: fields('apiVersion=1 kind=2'),
  // apimachinery apis/meta/v1/generated.proto
  ObjectMeta: fields(
    'name=1 generateName=2 namespace=3 selfLink=4 uid=5 resourceVersion=6 generation=7:int ' +
      'creationTimestamp=8:time deletionTimestamp=9:time deletionGracePeriodSeconds=10:int! ' +
      'labels=11:map annotations=12:map ownerReferences=13:[OwnerReference] finalizers=14:[string]',
  ),
  Time: fields('seconds=1:int! nanos=2:int!'),
  OwnerReference: fields(
    'kind=1! name=3! uid=4! apiVersion=5! controller=6:bool! blockOwnerDeletion=7:bool!',
  ),
  LabelSelector: fields('matchLabels=1:map matchExpressions=2:[LabelSelectorRequirement]'),
  LabelSelectorRequirement: fields('key=1! operator=2! values=3:[string]'),
  // api core/v1/generated.proto
  Namespace: fields(`${META} spec=2:NamespaceSpec status=3:NamespaceStatus`),
  NamespaceSpec: fields('finalizers=1:[string]'),
  NamespaceStatus: fields('phase=1'),
  ConfigMap: fields(`${META} data=2:map binaryData=3:map:bytes immutable=4:bool!`),
  Secret: fields(`${META} data=2:map:bytes type=3 stringData=4:map immutable=5:bool!`),
  ServiceAccount: fields(
    `${META} secrets=2:[ObjectReference] imagePullSecrets=3:[LocalObjectReference] automountServiceAccountToken=4:bool!`,
  ),
  ObjectReference: fields('kind=1 namespace=2 name=3 uid=4 apiVersion=5 resourceVersion=6 fieldPath=7'),
  LocalObjectReference: fields('name=1'),
  Service: fields(`${META} spec=2:ServiceSpec status=3:ServiceStatus`),
  ServiceSpec: fields(
    'ports=1:[ServicePort] selector=2:map clusterIP=3 type=4 externalIPs=5:[string] sessionAffinity=7 ' +
      'loadBalancerIP=8 externalName=10 externalTrafficPolicy=11 healthCheckNodePort=12:int ' +
      'publishNotReadyAddresses=13:bool ipFamilyPolicy=17 clusterIPs=18:[string] ipFamilies=19:[string] ' +
      'internalTrafficPolicy=22',
  ),
  ServicePort: fields('name=1 protocol=2 port=3:int! targetPort=4:intstr nodePort=5:int appProtocol=6'),
  ServiceStatus: fields('loadBalancer=1:LoadBalancerStatus'),
  LoadBalancerStatus: fields(''),
  ResourceQuota: fields(`${META} spec=2:ResourceQuotaSpec status=3:ResourceQuotaStatus`),
  ResourceQuotaSpec: fields('hard=1:map:quantity scopes=2:[string]'),
  ResourceQuotaStatus: fields('hard=1:map:quantity used=2:map:quantity'),
  PodTemplateSpec: fields(`${META} spec=2:PodSpec`),
  PodSpec: fields(
    'containers=2:[Container] restartPolicy=3 terminationGracePeriodSeconds=4:int! dnsPolicy=6 ' +
      'nodeSelector=7:map serviceAccountName=8 serviceAccount=9 nodeName=10 hostname=16 subdomain=17 ' +
      'schedulerName=19 priorityClassName=24 runtimeClassName=29!',
  ),
  Container: fields(
    'name=1! image=2 command=3:[string] args=4:[string] workingDir=5 ports=6:[ContainerPort] ' +
      'env=7:[EnvVar] resources=8:ResourceRequirements terminationMessagePath=13 imagePullPolicy=14 ' +
      'stdin=16:bool stdinOnce=17:bool tty=18:bool terminationMessagePolicy=20',
  ),
  ContainerPort: fields('name=1 hostPort=2:int containerPort=3:int! protocol=4 hostIP=5'),
  EnvVar: fields('name=1! value=2'),
  ResourceRequirements: fields('limits=1:map:quantity requests=2:map:quantity'),
  // api apps/v1/generated.proto
  Deployment: fields(`${META} spec=2:DeploymentSpec status=3:DeploymentStatus`),
  DeploymentSpec: fields(
    'replicas=1:int! selector=2:LabelSelector template=3:PodTemplateSpec strategy=4:DeploymentStrategy ' +
      'minReadySeconds=5:int revisionHistoryLimit=6:int! paused=7:bool progressDeadlineSeconds=9:int!',
  ),
  DeploymentStrategy: fields('type=1 rollingUpdate=2:RollingUpdateDeployment'),
  RollingUpdateDeployment: fields('maxUnavailable=1:intstr maxSurge=2:intstr'),
  DeploymentStatus: fields(
    'observedGeneration=1:int replicas=2:int updatedReplicas=3:int availableReplicas=4:int ' +
      'unavailableReplicas=5:int readyReplicas=7:int collisionCount=8:int! terminatingReplicas=9:int!',
  ),
  // api rbac/v1/generated.proto
  Role: fields(`${META} rules=2:[PolicyRule]`),
  PolicyRule: fields(
    'verbs=1:[string] apiGroups=2:[string] resources=3:[string] resourceNames=4:[string] nonResourceURLs=5:[string]',
  ),
  RoleBinding: fields(`${META} subjects=2:[Subject] roleRef=3:RoleRef`),
  Subject: fields('kind=1! apiGroup=2 name=3! namespace=4'),
  RoleRef: fields('apiGroup=1! kind=2! name=3!'),
  // api policy/v1/generated.proto
  PodDisruptionBudget: fields(`${META} spec=2:PodDisruptionBudgetSpec status=3:PodDisruptionBudgetStatus`),
  PodDisruptionBudgetSpec: fields(
    'minAvailable=1:intstr selector=2:LabelSelector maxUnavailable=3:intstr unhealthyPodEvictionPolicy=4!',
  ),
  PodDisruptionBudgetStatus: fields(
    'observedGeneration=1:int disruptionsAllowed=3:int! currentHealthy=4:int! desiredHealthy=5:int! expectedPods=6:int!',
  ),
};

/** The kinds decoded, by `apiVersion/kind` (the Unknown envelope's TypeMeta): their message. */
export const KINDS: Record<string, string> = {
  'v1/Namespace': 'Namespace',
  'v1/ConfigMap': 'ConfigMap',
  'v1/Secret': 'Secret',
  'v1/ServiceAccount': 'ServiceAccount',
  'v1/Service': 'Service',
  'v1/ResourceQuota': 'ResourceQuota',
  'apps/v1/Deployment': 'Deployment',
  'rbac.authorization.k8s.io/v1/Role': 'Role',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'RoleBinding',
  'policy/v1/PodDisruptionBudget': 'PodDisruptionBudget',
};
