"""What the corpus's hooks record: one JSON line per call in the file $CORPUS_MARKS, with the
hook's name, the recording process and what the hook was given."""

import json
import os


def mark(hook, **fields):
    with open(os.environ["CORPUS_MARKS"], "a") as f:
        f.write(json.dumps({"hook": hook, "in": os.getpid(), **fields}) + "\n")
