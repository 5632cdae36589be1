"""carapace docgen: DOCX, PPTX, XLSX and PDF documents from one JSON spec."""

__version__ = "1.0"
