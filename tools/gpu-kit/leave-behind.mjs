/**
 * Tracked paths a GPU session leaves behind (tools/gpu-kit/build.mjs says why; check.mjs copies the tree without
 * them, as it travels): `git rm -r -q --cached <paths> && printf '%s\n' <paths> >> .git/info/exclude`, undone after
 * the run with `git reset -q` and by removing those lines.
 */
export const LEAVE_BEHIND = ['public/models/', 'tests/fixtures/', 'bench/results/', 'docs/'];
