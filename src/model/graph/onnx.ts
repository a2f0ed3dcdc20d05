/**
 * An ONNX model writer: a small graph builder that serialises to ModelProto bytes (onnx.proto field numbers),
 * with initializers either inline or as external data pointing into another file (e.g. model.safetensors).
 */
import { ProtoWriter } from './protobuf';

export type OnnxDataType = 'float32' | 'float16' | 'bfloat16' | 'int64' | 'int32' | 'bool' | 'uint8' | 'int8';

/** TensorProto.DataType codes (also the `to` of a Cast). */
export const DATA_TYPE_CODE: Record<OnnxDataType, number> = {
  float32: 1,
  uint8: 2,
  int8: 3,
  int32: 6,
  int64: 7,
  bool: 9,
  float16: 10,
  bfloat16: 16,
};

/** A dimension is a fixed size or a symbolic name (dim_param). */
export type Dim = number | string;

export interface ExternalLocation {
  /** File name as the runtime will be told it (ORT web: the `path` of an `externalData` entry). */
  location: string;
  offset: number;
  length: number;
}

export interface TensorInit {
  name: string;
  dataType: OnnxDataType;
  dims: readonly number[];
  /** Little-endian raw bytes, or a pointer into an external file. Exactly one must be given. */
  raw?: Uint8Array;
  external?: ExternalLocation;
}

/**
 * Attribute values: a number is an INT, `{ f }` a FLOAT, a string a STRING, number[] INTS, a tensor TENSOR, a
 * `{ graph }` a GRAPH (an If branch).
 */
export type AttrValue =
  | number
  | { f: number }
  | string
  | readonly number[]
  | { floats: readonly number[] }
  | TensorInit
  | { graph: OnnxBranch };
export type Attrs = Record<string, AttrValue>;

interface NodeDef {
  opType: string;
  inputs: readonly string[];
  outputs: readonly string[];
  attrs: Attrs;
  domain: string;
  name: string;
}

interface ValueInfo {
  name: string;
  dataType: OnnxDataType;
  shape: readonly Dim[];
}

export interface NodeOptions {
  attrs?: Attrs;
  /** Number of outputs to create, or their explicit names. Default: 1 fresh output. */
  outputs?: number | readonly string[];
  domain?: string;
  name?: string;
}

/**
 * A subgraph for a control-flow node (If's then_branch / else_branch): its own nodes and outputs; it reads values of
 * the enclosing graph (weights, constants, earlier results) through the outer scope.
 */
export interface OnnxBranch {
  name: string;
  nodes: NodeDef[];
  outputs: ValueInfo[];
}

export class OnnxGraph {
  private nodes: NodeDef[] = [];
  /** Nodes over initializers alone (weight conversions), serialised first whatever branch was being built. */
  private prelude: NodeDef[] = [];
  /** Where node() puts nodes: this graph, or the branch being built. */
  private sink: NodeDef[] = this.nodes;
  private inputs: ValueInfo[] = [];
  private outputs: ValueInfo[] = [];
  private initializers: TensorInit[] = [];
  private counter = 0;
  private readonly opsetDomains = new Map<string, number>();

  constructor(
    readonly name: string,
    opset = 17,
  ) {
    this.opsetDomains.set('', opset);
  }

  /** Declare an extra operator-set domain (e.g. 'com.microsoft', 1). */
  useDomain(domain: string, version: number): void {
    this.opsetDomains.set(domain, version);
  }

  private fresh(hint: string): string {
    return `${hint}_${this.counter++}`;
  }

  input(name: string, dataType: OnnxDataType, shape: readonly Dim[]): string {
    this.inputs.push({ name, dataType, shape });
    return name;
  }

  output(name: string, dataType: OnnxDataType, shape: readonly Dim[]): void {
    this.outputs.push({ name, dataType, shape });
  }

  initializer(t: TensorInit): string {
    if ((t.raw === undefined) === (t.external === undefined)) {
      throw new Error(`initializer ${t.name}: give exactly one of raw or external`);
    }
    this.initializers.push(t);
    return t.name;
  }

  /** Small inline constants (shapes, axes, scalars). */
  constInt64(values: readonly number[], dims: readonly number[] = [values.length], hint = 'const'): string {
    const raw = new Uint8Array(values.length * 8);
    const view = new DataView(raw.buffer);
    values.forEach((v, i) => {
      view.setBigInt64(i * 8, BigInt(v), true);
    });
    return this.initializer({ name: this.fresh(hint), dataType: 'int64', dims, raw });
  }

  constFloat32(values: ArrayLike<number>, dims: readonly number[] = [values.length], hint = 'const'): string {
    const raw = new Uint8Array(new Float32Array(Array.from(values)).buffer);
    return this.initializer({ name: this.fresh(hint), dataType: 'float32', dims, raw });
  }

  node(opType: string, inputs: readonly string[], options: NodeOptions = {}): string[] {
    const outSpec = options.outputs ?? 1;
    const outputs =
      typeof outSpec === 'number' ? Array.from({ length: outSpec }, () => this.fresh(opType.toLowerCase())) : outSpec;
    this.sink.push({
      opType,
      inputs,
      outputs,
      attrs: options.attrs ?? {},
      domain: options.domain ?? '',
      name: options.name ?? this.fresh(`n_${opType}`),
    });
    return [...outputs];
  }

  /**
   * A node at the top of the graph, before all others, whatever branch is being built: for a weight's conversion,
   * whose inputs are initializers (onnxruntime folds such a node into a constant when it creates the session).
   */
  preludeNode(opType: string, inputs: readonly string[], output: string, attrs: Attrs = {}): string {
    this.prelude.push({ opType, inputs, outputs: [output], attrs, domain: '', name: this.fresh(`n_${opType}`) });
    return output;
  }

  /** A node with exactly one output; returns that output's name. */
  op(opType: string, inputs: readonly string[], attrs: Attrs = {}, output?: string): string {
    const [out] = this.node(opType, inputs, { attrs, outputs: output ? [output] : 1 });
    return out as string;
  }

  /**
   * Build a branch: the nodes `build` adds go into the branch (initializers, e.g. weights and constants, still go
   * to this graph and are read through the outer scope); `build` returns the names of the branch's outputs.
   */
  branch(
    name: string,
    outputs: { dataType: OnnxDataType; shape: readonly Dim[] }[],
    build: () => string[],
  ): OnnxBranch {
    const nodes: NodeDef[] = [];
    const outer = this.sink;
    this.sink = nodes;
    let names: string[];
    try {
      names = build();
    } finally {
      this.sink = outer;
    }
    if (names.length !== outputs.length)
      throw new Error(`branch ${name}: ${names.length} outputs, ${outputs.length} types`);
    return {
      name,
      nodes,
      outputs: names.map((n, i) => ({ name: n, ...(outputs[i] as { dataType: OnnxDataType; shape: Dim[] }) })),
    };
  }

  get nodeCount(): number {
    return this.prelude.length + this.nodes.length;
  }

  toBytes(producer = 'spec-decoder'): Uint8Array {
    const w = new ProtoWriter();
    w.int(1, 8); // ir_version 8 (opset 17 era)
    w.string(2, producer);
    w.string(3, '0.1.0');
    w.message(7, (g) => writeGraph(g, this));
    for (const [domain, version] of this.opsetDomains) {
      w.message(8, (o) => o.string(1, domain).int(2, version));
    }
    return w.finish();
  }

  /** @internal read access for the serialiser */
  parts() {
    return {
      nodes: [...this.prelude, ...this.nodes],
      inputs: this.inputs,
      outputs: this.outputs,
      initializers: this.initializers,
    };
  }
}

function writeGraph(w: ProtoWriter, graph: OnnxGraph): void {
  const { nodes, inputs, outputs, initializers } = graph.parts();
  for (const n of nodes) w.message(1, (m) => writeNode(m, n));
  w.string(2, graph.name);
  for (const t of initializers) w.message(5, (m) => writeTensor(m, t));
  for (const v of inputs) w.message(11, (m) => writeValueInfo(m, v));
  for (const v of outputs) w.message(12, (m) => writeValueInfo(m, v));
}

function writeBranch(w: ProtoWriter, b: OnnxBranch): void {
  for (const n of b.nodes) w.message(1, (m) => writeNode(m, n));
  w.string(2, b.name);
  for (const v of b.outputs) w.message(12, (m) => writeValueInfo(m, v));
}

function writeNode(w: ProtoWriter, n: NodeDef): void {
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  w.string(3, n.name);
  w.string(4, n.opType);
  for (const [name, value] of Object.entries(n.attrs)) w.message(5, (a) => writeAttr(a, name, value));
  if (n.domain) w.string(7, n.domain);
}

function writeAttr(w: ProtoWriter, name: string, value: AttrValue): void {
  w.string(1, name);
  if (typeof value === 'number') {
    w.int(3, value).int(20, 2);
  } else if (typeof value === 'string') {
    w.string(4, value).int(20, 3);
  } else if (Array.isArray(value)) {
    w.packedInts(8, value as readonly number[]).int(20, 7);
  } else if ('f' in value) {
    w.float(2, value.f).int(20, 1);
  } else if ('floats' in value) {
    w.packedFloats(7, value.floats).int(20, 6);
  } else if ('graph' in value) {
    w.message(6, (g) => writeBranch(g, value.graph)).int(20, 5);
  } else {
    w.message(5, (t) => writeTensor(t, value as TensorInit)).int(20, 4);
  }
}

function writeTensor(w: ProtoWriter, t: TensorInit): void {
  w.packedInts(1, t.dims);
  w.int(2, DATA_TYPE_CODE[t.dataType]);
  w.string(8, t.name);
  if (t.raw) {
    w.bytes(9, t.raw);
  } else if (t.external) {
    const entries: [string, string][] = [
      ['location', t.external.location],
      ['offset', String(t.external.offset)],
      ['length', String(t.external.length)],
    ];
    for (const [key, value] of entries) w.message(13, (e) => e.string(1, key).string(2, value));
    w.int(14, 1); // data_location = EXTERNAL
  }
}

function writeValueInfo(w: ProtoWriter, v: ValueInfo): void {
  w.string(1, v.name);
  w.message(2, (type) =>
    type.message(1, (tensor) => {
      tensor.int(1, DATA_TYPE_CODE[v.dataType]);
      tensor.message(2, (shape) => {
        for (const d of v.shape) {
          shape.message(1, (dim) => (typeof d === 'number' ? dim.int(1, d) : dim.string(2, d)));
        }
      });
    }),
  );
}
