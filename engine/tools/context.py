"""What the tools of one run share: the document store, the documents already in the model's context, the
run's sources, and the canvas layout. One RunContext per run; nothing in it outlives the run."""

from dataclasses import dataclass, field


@dataclass
class RunContext:
    documents: object = None  # a DocumentStore (engine.tools.documents)
    in_context: set = field(default_factory=set)  # ids of documents retrieved or read in this run
    sources: list = field(default_factory=list)  # [{"id", "title"}], in first-seen order, each id once
    # canvas components: {"uuid", "component", "region", "props", "children"}
    layout: list = field(default_factory=list)

    def add_source(self, doc_id, title):
        self.in_context.add(doc_id)
        if all(source["id"] != doc_id for source in self.sources):
            self.sources.append({"id": doc_id, "title": title})
