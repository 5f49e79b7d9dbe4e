"""Our additions to the children upstream's builders render: each a decorator the builders apply in turn
(docs/architecture.md), so the builders stay exactly as upstream and import none of them."""
