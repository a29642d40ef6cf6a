"""Tool search: BM25 keyword retrieval with typo tolerance, embeddings, and their fusion."""
