#!/usr/bin/env bash
# Line and branch coverage of dmlgpu/ by the whole test command (scripts/test.sh: the suite, the second process's
# slices and every Python subprocess they start): each Python process measures itself (coverage.py's
# process_startup, through a sitecustomize.py on PYTHONPATH), then the data is combined and reported. The package
# as installed into .venv (a few tests import it from outside the tree) is left out of the report. Needs coverage.py
# (installed into .venv if missing). Extra arguments go to scripts/test.sh. Writes build/coverage/report.txt and
# coverage.json; prints the totals last. The exit status is the test command's.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/build/coverage"
rm -rf "$out"
mkdir -p "$out/hook"
.venv/bin/python -c 'import coverage' 2>/dev/null || .venv/bin/python -m pip install -q coverage
cat > "$out/coveragerc" <<EOF
[run]
branch = True
source = dmlgpu
parallel = True
data_file = $out/.coverage
EOF
printf 'import coverage\ncoverage.process_startup()\n' > "$out/hook/sitecustomize.py"
status=0
COVERAGE_PROCESS_START="$out/coveragerc" PYTHONPATH="$out/hook${PYTHONPATH:+:$PYTHONPATH}" bash scripts/test.sh "$@" \
    || status=$?
rc=(--rcfile="$out/coveragerc")
.venv/bin/python -m coverage combine -q "${rc[@]}"
.venv/bin/python -m coverage report "${rc[@]}" --omit '*/site-packages/*' > "$out/report.txt"
.venv/bin/python -m coverage json "${rc[@]}" --omit '*/site-packages/*' -q -o "$out/coverage.json"
.venv/bin/python - "$out/coverage.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(f"coverage of dmlgpu/ ({sys.argv[1]}): lines {100 * t['covered_lines'] / t['num_statements']:.2f} % "
      f"({t['covered_lines']} of {t['num_statements']}), branches {100 * t['covered_branches'] / t['num_branches']:.2f} % "
      f"({t['covered_branches']} of {t['num_branches']})")
EOF
exit $status
