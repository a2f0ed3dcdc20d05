/**
 * A child process for the shutdown test: one call of a tiny model on WebGPU in Node, release, shutdown, and then
 * nothing: no process.exit, so the process must end by itself.
 */
import { chainBias } from '../../engine/tree';
import { ModelRunner } from '../../model/runner';
import { randomModel } from '../../model/testing/random-model';
import { ortForNodeWebGpu } from '../ort-node-webgpu';

const gpu = await ortForNodeWebGpu();
if (!gpu.ok) throw new Error(gpu.reason);
const runner = await ModelRunner.create(gpu.ort, randomModel().model, { device: 'webgpu' });
await runner.forward({ tokens: [1, 2, 3], positions: [0, 1, 2], bias: chainBias(0, 3), rows: [2] });
await runner.release();
await gpu.shutdown();
console.log('released');
