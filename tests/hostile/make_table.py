"""Print the hostile-input corpus as a Markdown table: every case, its command and its exact error line.

    python tests/hostile/make_table.py [> hostile-table.md]

Exit status 1 if any case is not a proper one-line user error (same check as tests/test_hostile.py).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_corpus import all_cases, problems, run_case  # noqa: E402


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main() -> int:
    rows, failures = [], 0
    for case in all_cases():
        with tempfile.TemporaryDirectory() as tmp:
            out = run_case(case, Path(tmp))
        bad = problems(case, out)
        failures += bool(bad)
        status = "ok" if not bad else "BAD: " + "; ".join(bad)
        rows.append(f"| `{case.id}` | {case.kind} | `dse {_cell(' '.join(case.argv))}` | {out.rc} | "
                    f"`{_cell(out.line)}` | {status} |")
    print("| case | input | command | exit | error line (stderr) | check |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\n{len(rows)} cases, {len(rows) - failures} proper one-line errors, {failures} bad")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
