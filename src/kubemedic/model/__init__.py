"""Pure model of Kubernetes objects: quantities, resources, field paths, owners, the view."""
