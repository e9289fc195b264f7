"""The request parser against two others (h11's and gunicorn's) on the same raw bytes: a corpus
of valid requests and seeded mutations of it (`tests/differential.py`). Wherever sluicegate and
the other parser both accept a request, they must see the same method, target, header fields
(as a WSGI app gets them) and body, in the same order; and when neither refuses anything and
both read to the end, the same number of requests. Refusing what the other accepts is allowed
(parsers differ in strictness), and counted.

`./dev test` runs 2,000 mutations (seed 32); `./dev fuzz` runs more with a new seed each time
(`SLUICEGATE_DIFF_CASES`, `SLUICEGATE_DIFF_SEED`). A difference is printed with its bytes: add
them to `CORPUS` once understood.
"""

import os

from tests.differential import cases, compare, gunicorn_view, h11_view, sluicegate_view

SEED = int(os.environ.get("SLUICEGATE_DIFF_SEED", "32"))
COUNT = int(os.environ.get("SLUICEGATE_DIFF_CASES", "2000"))


def test_sluicegate_h11_and_gunicorn_see_the_same_requests_where_both_accept(servers):
    srv = servers.get("echo_head")
    differences = []
    both_accepted = {"h11": 0, "gunicorn": 0}
    only_we_refused = {"h11": 0, "gunicorn": 0}
    for raw in cases(SEED, COUNT):
        ours = sluicegate_view(srv.port, raw)
        for name, view in (("h11", h11_view), ("gunicorn", gunicorn_view)):
            theirs = view(raw)
            found = compare(ours, theirs)
            if found:
                differences.append(f"{name}, seed {SEED}: {raw!r}\n    {found}")
            both_accepted[name] += bool(ours.requests and theirs.requests)
            only_we_refused[name] += ours.refused and not theirs.refused
    assert not differences, f"{len(differences)} difference(s):\n" + "\n".join(differences[:20])
    # The check compares something: a good share of the inputs parse for both.
    assert min(both_accepted.values()) > COUNT // 10, both_accepted
    print(f"seed {SEED}, {COUNT} mutations: accepted by both {both_accepted}; "
          f"refused by sluicegate only {only_we_refused}")
