"""The DevMem notes hold secret *locations* and no secret values: the scanner must change none of them.

Every note of both DevMem splits as `remember` would scan it, and every agent-mode fact field
(the slot as a name, each value as an object) — including notes such as "Vault path
`secret/data/br/pagerduty-api-token`", where a path naming a secret is not a secret.
"""

from __future__ import annotations

from eval.secrets_devmem import changed, load_texts
from tests.conftest import shared_dir


def test_no_devmem_note_or_fact_field_is_redacted() -> None:
    data = shared_dir("data", "devmem").parent
    shared_dir("data", "devmem_validation")
    texts = load_texts(data)
    assert len(texts) > 9000  # 4,800 notes and their slots' fact fields
    assert any("secret/data/" in text for _, _, text, _ in texts)  # the locations this test is about are there
    altered = changed(texts)
    assert altered == {}, list(altered.items())[:5]
