"""The search component: candidates for (filter, query) — dense, lexical, exact names — with their scores.

engine.py is its interface (`Search`, `open_store`, the searches the consolidator uses); candidates.py the
pure types ranking reads (`Candidate`, `Searcher`); terms.py the tokenizer both the lexical channel and
ranking use; english.py English word frequencies; readindex.py (with densematrix.py) the in-memory copy of the
table; lance.py LanceDB's own vector and full-text searches. Storage keeps the read index in step with the table; nothing here ranks.
"""
