import pytest

# The helpers in tests/support assert as the tests do: their failures explained as a test
# module's are (many were in test modules), which needs this before they are imported.
pytest.register_assert_rewrite("tests.support")
