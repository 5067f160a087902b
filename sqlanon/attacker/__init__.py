"""The attacker of a domain, replayed over every release of it. Pure numpy.

A domain is the people behind a source (MODELS.md, "Cells"). Its attacker holds every
release of the domain, of every family and both models, and links them by person
(at worst it knows every group's or class's membership). Records are numbered
0..n-1 across the whole domain; ``values[a][i]`` is record ``i``'s true value of
attribute ``a`` and each :class:`~sqlanon.attacker.history.AttackedRelease` gives every
record's group (-1: absent), the sensitive attributes the release published (each
group's multiset of them is public) and its :class:`~sqlanon.models.cells.Requirement`.

After each release (each prefix of the list) four checks run, each naming the
records it exposes:

- ``cell`` (the worst case, the rule sqlanon enforces): a record's history is its group
  in every release so far, with "absent" once it was first published; records with the
  same history form a cell; a cell's requirement is the union (per attribute: the
  largest number of distinct values, the largest spread) of the requirements of the
  releases that published it. A cell whose multiset of some required attribute has
  fewer distinct values, or a smaller spread (max - min), than required exposes its
  records.
- ``subtraction`` (the multiset attacker): every group of every release is a known set
  (its records, and per published attribute its multiset). Whenever known set A's
  records lie strictly inside known set B's and both know attribute a, B - A is known,
  with multiset B_a - A_a; repeated to a fixed point. A record's candidates for a are
  the intersection of the distinct values of every known set holding it that knows a;
  fewer distinct candidates than required, or a candidate spread below the required
  spread, exposes it.
- ``comparison`` (seed 002's comparison attack, over every release): the same with the
  groups only, no subtraction.
- ``chain`` (MODELS.md, "Changing tables", the chain rule's worst case): ``chains``
  lists each changed person's incarnations, oldest first (a ghost of an old value,
  then the next, ...); the attacker knows that consecutive incarnations differ on the
  attributes whose values differ and agree on the others. Only incarnations published
  by then count. An incarnation's candidates are the tuples (every audited attribute)
  of its cell's never-changed members that extend along its chain to a compatible
  tuple of a never-changed cellmate of every other incarnation; fewer distinct values
  (or a smaller spread) than its cell's requirement exposes it, and a cell holding an
  incarnation whose never-changed members alone miss the requirement exposes all its
  members. Ghosts of deleted records are never-changed members like any other.

The first three checks nest: ``comparison`` ⊆ ``subtraction`` ⊆ ``cell``. Every known set is a union
of cells (cells refine every group, and a difference of unions of cells is one), so a
record's candidates always contain its own cell's values: when its cell meets the
requirement, no known set can expose it. The audit uses this to attack only the records
of failing cells (``shortcut``), which is exact; with ``shortcut=False`` it attacks every
record, which tests use to check the nesting itself.

The subtraction works on cells, not records, and indexes known sets by the cells they
hold, so that finding the sets inside or around a new one looks only at sets sharing a
cell with it. Its work is bounded by ``max_derived`` derived sets per prefix (by default
``DERIVED_PER_GROUP`` per group, within ``MIN_DERIVED``..``MAX_DERIVED``); a prefix
that reaches it reports ``subtraction_complete=False`` (its ``by_subtraction`` is then a
lower bound; ``by_cell``, the worst case, and so ``exposed`` stay exact).

Modules: :mod:`~sqlanon.attacker.replay` (:func:`~sqlanon.attacker.replay.audit_domain`,
:func:`~sqlanon.attacker.replay.candidates`), :mod:`~sqlanon.attacker.history` (the
releases as the attacker sees them, the cells they make, the cell check),
:mod:`~sqlanon.attacker.known_sets` (the comparison and subtraction attacks),
:mod:`~sqlanon.attacker.chains` (the chain check), :mod:`~sqlanon.attacker.encoding`
(values as codes). The package is not called ``audit``: that is the public function
``sqlanon.audit`` (which runs this attacker on a database, :mod:`sqlanon.state.audit_reads`), and
importing a package of that name would replace it.
"""
