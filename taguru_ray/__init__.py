"""taguru-ray: Taguru's document extraction as a distributed batch job on Ray."""

__version__ = "0.1.0"
