"""Consolidation: resolve new facts against what the store already holds — invalidate, never delete.

Plain functions over storage records. The resolution rules are pure (`resolve.py`);
`apply.py` reads the slot from storage and commits the plan atomically.
"""
