/**
 * The Python tools' --help answers on a machine without PyTorch (CI, a user who has not installed it yet): the tool's
 * description and what its options need, exit status 0; run for real they refuse in one line. Skipped where no
 * python3 is on the PATH.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const python = spawnSync('python3', ['-c', 'import sys; print(sys.version)'], { encoding: 'utf8' });
const hasTorch = spawnSync('python3', ['-c', 'import torch, numpy'], { encoding: 'utf8' }).status === 0;
const tools = readdirSync('tools').filter(
  (f) => f.endsWith('.py') && /^tool_errors\.require_torch\(\)/m.test(readFileSync(join('tools', f), 'utf8')),
);

describe.skipIf(python.status !== 0)('the Python tools', () => {
  it('are found', () => {
    expect(tools).toContain('train_medusa.py');
    expect(tools.length).toBeGreaterThan(8);
  });

  it.each(tools)('%s --help answers with or without PyTorch', (tool) => {
    const help = spawnSync('python3', [join('tools', tool), '--help'], { encoding: 'utf8' });
    expect(help.stderr).not.toMatch(/Traceback/);
    expect(help.status).toBe(0);
    if (hasTorch) expect(help.stdout).toMatch(/^usage: /m);
    else expect(help.stdout).toMatch(/PyTorch and NumPy are missing here .*so its options cannot be listed/);
    // The tool's own description comes first.
    expect(help.stdout.trim().length).toBeGreaterThan(80);
  });

  it.skipIf(hasTorch)('run without PyTorch, a tool refuses in one line with exit status 2', () => {
    const run = spawnSync('python3', [join('tools', 'train_medusa.py')], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr.trim()).toMatch(
      /^error: this tool needs PyTorch and NumPy \(torch is missing\): apt-get install/,
    );
  });
});
