#!/usr/bin/env bash
# The first run's compile cost, as a new user meets it: the wheel (not editable) in a fresh venv,
# its numba caches deleted before each run, `colony-eval greedy random --games 2 --workers 1`.
#   bash tests/scripts/cold_compile.sh [BASE_COMMIT] [ROUNDS]   # e.g. a1226a3 4: alternates base and this tree
# The venvs reuse the active environment's packages (a .pth file), so only colony-rl is new in them.
# It prints CPU and wall seconds per run, the load average, and how many kernels each run compiled.
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:-}
ROUNDS=${2:-3}
WORK=$(mktemp -d)
trap 'git worktree remove --force "$WORK/base-tree" 2>/dev/null || true; rm -rf "$WORK"' EXIT
SITE=$(python -c "import sys; print('\\n'.join(p for p in sys.path if p.endswith('site-packages')))")
make_venv() {  # make_venv NAME SOURCE_DIR
  python -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$WORK/$1-dist" "$2" >/dev/null
  python3 -m venv --without-pip "$WORK/$1"
  printf '%b\n' "$SITE" > "$("$WORK/$1/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/_deps.pth"
  "$WORK/$1/bin/python" -m pip install --quiet --no-deps "$WORK/$1-dist"/*.whl
}
names=(this)
make_venv this .
if [ -n "$BASE" ]; then
  git worktree add --quiet --detach "$WORK/base-tree" "$BASE"
  make_venv base "$WORK/base-tree"
  names=(base this)
fi
mkdir "$WORK/empty" && cd "$WORK/empty"
for round in $(seq "$ROUNDS"); do
  for name in "${names[@]}"; do
    sp=$("$WORK/$name/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    find "$sp/colony_env" "$sp/colony_training" -name "*.nb[ic]" -delete
    rm -rf out
    load=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    NUMBA_DEBUG_CACHE=1 /usr/bin/time -o "$WORK/time" -f "%U %S" "$WORK/$name/bin/colony-eval" greedy random \
      --games 2 --workers 1 --no-progress --out out > "$WORK/log" 2>&1
    wall=$(python -c "import time; print(f'{time.time() - $start:.1f}')")
    compiled=$(grep -c "data saved" "$WORK/log" || true)
    read -r user sys < "$WORK/time"
    echo "$name round $round: $(python -c "print(f'{$user + $sys:.1f}')") CPU s, $wall wall s, $compiled kernels compiled (load $load)"
  done
done
