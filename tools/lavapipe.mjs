/**
 * WebGPU for Node needs a Vulkan driver under Dawn (npm `webgpu`). A machine without a GPU gets lavapipe, Mesa's
 * Vulkan on the CPU: Debian bookworm's own build (22.3) is rejected by Dawn, the one in bookworm-backports (25.x)
 * works and has shader-f16. Used by tools/bootstrap.mjs; Node's standard library only.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const BACKPORTS_SOURCE = '/etc/apt/sources.list.d/bookworm-backports.sources';

let lastProbeError = '';

/** Whether Dawn finds any Vulkan adapter here (a real GPU or lavapipe). Returns its description or null. */
export function probeAdapter(root) {
  const code = `
    const { create } = await import('webgpu');
    const a = await create([]).requestAdapter();
    console.log(JSON.stringify(a ? [a.info.vendor, a.info.architecture, a.info.description].join(' / ') : null));
    process.exit(0);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  lastProbeError = (r.stderr ?? '').split('\n')[0] ?? '';
  if (r.status !== 0) return null;
  try {
    return JSON.parse(r.stdout.trim().split('\n').pop() ?? 'null');
  } catch {
    return null;
  }
}

function codename() {
  try {
    return /^VERSION_CODENAME=(.*)$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1]?.trim() ?? '';
  } catch {
    return '';
  }
}

const MANUAL = [
  'Debian bookworm (as root):',
  `  printf 'Types: deb\\nURIs: http://deb.debian.org/debian\\nSuites: bookworm-backports\\nComponents: main\\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\\n' > ${BACKPORTS_SOURCE}`,
  '  apt-get update && apt-get install -y libvulkan1 && apt-get install -y -t bookworm-backports mesa-vulkan-drivers libdrm2 libdrm-amdgpu1',
  'Debian trixie or newer, Ubuntu 24.04 or newer: apt-get install -y libvulkan1 mesa-vulkan-drivers',
  'A machine with a GPU needs its vendor Vulkan driver and libvulkan1 instead.',
].join('\n');

/**
 * Make sure a Vulkan adapter exists for Dawn; install lavapipe with apt-get when there is none and we are root.
 * @param run (cmd, args, options) => exit status, printing the command
 * @param log where its messages go (its errors go to stderr)
 * @returns `{ adapter }`: its description, or null (with the reason printed) when there is none; `failed` when an
 *   install was attempted and did not give an adapter.
 */
export function ensureLavapipe(root, run, env, log = console.log) {
  const found = probeAdapter(root);
  if (found) return { adapter: found, failed: false };
  if (lastProbeError) log(`Dawn: ${lastProbeError}`);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = existsSync('/usr/bin/apt-get');
  if (!isRoot || !apt) {
    console.error(
      `No Vulkan adapter for WebGPU in Node (Dawn found none), so the Node WebGPU tests will be skipped.\n` +
        `Install lavapipe (Mesa's Vulkan on the CPU, >= 23):\n${MANUAL}`,
    );
    return { adapter: null, failed: false };
  }
  const bookworm = codename() === 'bookworm';
  log(
    `No Vulkan adapter for WebGPU in Node: installing lavapipe with apt-get${bookworm ? ' (from bookworm-backports)' : ''}...`,
  );
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  if (bookworm && !existsSync(BACKPORTS_SOURCE)) {
    writeFileSync(
      BACKPORTS_SOURCE,
      'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\n' +
        'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n',
    );
    log(`added ${BACKPORTS_SOURCE}`);
  }
  const ok =
    run('apt-get', ['update'], { env: aptEnv }) === 0 &&
    run('apt-get', ['install', '-y', '--no-install-recommends', 'libvulkan1'], { env: aptEnv }) === 0 &&
    run(
      'apt-get',
      bookworm
        ? [
            'install',
            '-y',
            '--no-install-recommends',
            '-t',
            'bookworm-backports',
            'mesa-vulkan-drivers',
            'libdrm2',
            'libdrm-amdgpu1',
          ]
        : ['install', '-y', '--no-install-recommends', 'mesa-vulkan-drivers'],
      { env: aptEnv },
    ) === 0;
  const after = ok ? probeAdapter(root) : null;
  if (!after) {
    console.error(
      `${ok ? 'apt-get installed lavapipe but Dawn still finds no Vulkan adapter' : 'apt-get could not install lavapipe'}` +
        ` (see the output above). By hand:\n${MANUAL}`,
    );
    return { adapter: null, failed: true };
  }
  return { adapter: after, failed: false };
}
