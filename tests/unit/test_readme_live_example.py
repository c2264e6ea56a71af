"""The README's example of a run driven step by step is run, so it cannot drift from what the engine does."""

import re
import time
from pathlib import Path

README = (Path(__file__).parents[2] / "README.md").read_text()


def test_the_step_by_step_example_waits_for_its_approval_and_answers_as_its_comment_says():
    [example] = [
        block for block in re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL) if "advance_run" in block
    ]
    namespace = {}

    before = time.time()
    exec(example, namespace)

    run = namespace["state"]["run"]
    assert run["answer"] == "Nodes have article and page bundles."
    review = run["rounds"][0]["calls"][0]["review"]
    assert before - 0.001 <= review.pop("decided_at") <= time.time()  # taken when decide_run was called
    assert review == {"decision": "approved", "by": "a reviewer", "reason": None, "arguments": None}
