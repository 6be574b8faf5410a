"""Scene-graph nodes to entity documents: texts, sub-documents, metadata, ancestors, hashes."""

from __future__ import annotations

from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.documents import (
    DocumentConfig,
    graph_documents,
    label_text,
    node_documents,
    split_document_id,
)

CAPTION = "A chipped blue ceramic mug with a faded logo, half full of cold coffee."


def small_graph() -> SceneGraph:
    g = SceneGraph()
    g.add("B1", "Building", "building", (0, 0, 0))
    g.add("F1", "Floor", "floor", (0, 0, 0))
    g.add("R1", "Room", "kitchen", (1, 1, 0))
    g.add("P1", "Place", "place", (1, 1, 0))
    g.add(
        "O1",
        "Object",
        "coffee_mug",
        (1, 1, 1),
        description="blue mug",
        caption=CAPTION,
        isDirty=True,
        name="Bob's mug",
        affordances=["fill", "wash"],
    )
    g.add("E1", "FunctionalElement", "handle", (1, 1.1, 1))
    g.add("O2", "Object", "CoffeeTable", (2, 1, 0))
    for parent, child, kind in [
        ("B1", "F1", "CONTAINS"),
        ("F1", "R1", "CONTAINS"),
        ("R1", "P1", "CONTAINS"),
        ("P1", "O1", "CONTAINS"),
        ("O1", "E1", "HAS_ELEMENT"),
    ]:
        g.add_edge(parent, child, kind)
    return g


def test_label_text() -> None:
    assert label_text("coffee_table") == "coffee table"
    assert label_text("CoffeeTable") == "coffee table"
    assert label_text("TV") == "tv"
    assert label_text("red  coffee-mug") == "red coffee mug"


def test_entity_document_subdocuments_and_metadata() -> None:
    docs = {nd.symbol: nd for nd in graph_documents(small_graph())}
    mug = docs["O1"]
    entity, caption = mug.documents
    assert entity.doc_id == "O1" and entity.field is None and entity.text == "Bob's mug (coffee mug)"
    assert caption.doc_id == "O1#caption" and caption.is_subdocument and caption.text == CAPTION
    assert split_document_id(caption.doc_id) == ("O1", "caption")
    meta = entity.metadata
    assert meta["description"] == "blue mug"  # short text stays metadata
    assert "caption" not in meta  # long text became a sub-document
    assert meta["isDirty"] is True and meta["affordances"] == ["fill", "wash"]
    assert meta["symbol"] == "O1" and meta["label"] == "Object" and meta["class"] == "coffee_mug"
    assert meta["position"] == [1.0, 1.0, 1.0] and meta["z"] == 1.0
    assert (meta["room"], meta["floor"], meta["building"]) == ("R1", "F1", "B1")
    assert caption.metadata == meta
    # functional elements inherit the ancestors of their object via HAS_ELEMENT
    assert docs["E1"].documents[0].metadata["room"] == "R1"
    assert "room" not in docs["O2"].documents[0].metadata
    assert docs["O2"].documents[0].text == "coffee table"


def test_hashes_separate_text_changes_from_metadata_changes() -> None:
    node = Node("O9", "Object", "mug", (0, 0, 0), attributes={"isDirty": False, "caption": CAPTION})
    base = node_documents(node)
    node.attributes["isDirty"] = True
    flipped = node_documents(node)
    assert flipped.text_hash == base.text_hash and flipped.meta_hash != base.meta_hash
    node.class_name = "cup"
    renamed = node_documents(node)
    assert renamed.text_hash != base.text_hash
    node.attributes["caption"] = CAPTION + " It sits by the sink."
    assert node_documents(node).text_hash != renamed.text_hash
    assert node_documents(node, ancestors={"room": "R2"}).meta_hash != node_documents(node).meta_hash


def test_config_selects_labels_and_threshold() -> None:
    config = DocumentConfig(labels=("Object",), subdocument_min_chars=5, include_ancestors=False)
    docs = {nd.symbol: nd for nd in graph_documents(small_graph(), config)}
    assert set(docs) == {"O1", "O2"}
    assert [d.field for d in docs["O1"].documents] == [None, "caption", "description"]
    assert "room" not in docs["O1"].documents[0].metadata
