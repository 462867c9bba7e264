"""The contract the crawler and the Worker share: the JSON files in this folder, and their reader (contract.py)."""
