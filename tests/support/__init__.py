"""What the tests share: helpers, fakes and fixtures' plugins, imported by the test modules
and by conftest.py, never from a test module."""
