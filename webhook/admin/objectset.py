"""The set the admin guard judges: the input ∪ the cluster state, the input winning.

A change is judged against the live cluster: the state files (``--cluster-state``, what
``kubectl get -o yaml`` or ``tpu-admission snapshot`` print, read by the same reader as
the manifests) give the objects as they are, and each input object takes the place of
the state's object of the same kind, namespace and name.

A kind is known when some input or state document holds one of its objects, or when the
state holds a typed list of it (``NodeList``), even an empty one: an empty list is a known
zero. A kind nobody supplied is unknown, and every rule that needs it is skipped with a
note naming what to add (unknown is not zero).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from webhook.admin.kueueobjects import KINDS, AdminKind, KueueObject, Skipped, TypedList, read_document
from webhook.objects.sources import Document
from webhook.policy.config import Policy


@dataclass(slots=True)
class InputEntry:
    """One input document and what the guard made of it (its result comes from this)."""

    document: Document
    read: KueueObject | Skipped


@dataclass(slots=True)
class ObjectSet:
    """Objects by kind, then by (namespace, name); the kinds that are known."""

    objects: dict[str, dict[tuple[str, str], KueueObject]] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)
    #: why a kind is unknown, by plural, when something better than "nobody supplied it" is
    #: known (the webhook: the watch's reason); a skip note says it instead
    reasons: dict[str, str] = field(default_factory=dict)

    def put(self, obj: KueueObject) -> None:
        self.objects.setdefault(obj.kind.kind, {})[(obj.namespace, obj.name)] = obj
        self.known.add(obj.kind.plural)

    def replaced(self, obj: KueueObject) -> ObjectSet:
        """This set with ``obj`` in place of its kind/namespace/name (a new set; this one is unchanged).

        Only the outer map and ``obj``'s kind are copied: a request judging one object
        against 1,000 cached ClusterQueues copies one dict, not the cache.
        """
        objects = dict(self.objects)
        objects[obj.kind.kind] = {**objects.get(obj.kind.kind, {}), (obj.namespace, obj.name): obj}
        return ObjectSet(objects, self.known | {obj.kind.plural}, self.reasons)

    def of(self, kind: AdminKind) -> list[KueueObject]:
        return list(self.objects.get(kind.kind, {}).values())

    def get(self, kind: AdminKind, name: str, namespace: str = "") -> KueueObject | None:
        return self.objects.get(kind.kind, {}).get((namespace, name))

    def knows(self, kind: AdminKind) -> bool:
        return kind.plural in self.known

    def knows_plural(self, plural: str) -> bool:
        """Whether the kind named as rules' ``requires`` name it ("Nodes") is known."""
        return plural in self.known

    def missing(self, plurals: Iterable[str]) -> list[AdminKind]:
        """Of the kinds named (plural), those nobody supplied, in catalog order."""
        wanted = set(plurals)
        return [kind for kind in KINDS if kind.plural in wanted and kind.plural not in self.known]


def assemble(
    inputs: Iterable[Document], state: Iterable[Document], policy: Policy
) -> tuple[ObjectSet, list[InputEntry]]:
    """The judged set (input over state) and the input documents in order, each read once."""
    objects = ObjectSet()
    for document in state:
        for obj in _objects(read_document(document, "state", policy), objects):
            objects.put(obj)
    entries: list[InputEntry] = []
    for document in inputs:
        read = read_document(document, "input", policy)
        if document.header and not isinstance(read, TypedList):
            continue  # the head of a list of other kinds (JobSetList): its items are reported, not it
        if isinstance(read, TypedList):
            objects.known.add(read.kind.plural)
            for item in read.items:
                item_document = item.document if isinstance(item, KueueObject) and item.document else document
                entries.append(InputEntry(item_document, item))
                if isinstance(item, KueueObject):
                    objects.put(item)
            continue
        entries.append(InputEntry(document, read))
        if isinstance(read, KueueObject):
            objects.put(read)
    return objects, entries


def _objects(read: KueueObject | Skipped | TypedList, objects: ObjectSet) -> list[KueueObject]:
    if isinstance(read, KueueObject):
        return [read]
    if isinstance(read, TypedList):
        objects.known.add(read.kind.plural)
        return [item for item in read.items if isinstance(item, KueueObject)]
    return []
