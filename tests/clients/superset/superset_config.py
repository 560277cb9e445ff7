# Superset's configuration for the test: SQLite metadata in the folder the
# test gives (SUPERSET_HOME), no CSRF (the test talks to the REST API).
import os

SECRET_KEY = "lakegres-superset-test-key-0123456789abcdef"
SQLALCHEMY_DATABASE_URI = "sqlite:///" + os.path.join(os.environ["SUPERSET_HOME"], "superset.db")
WTF_CSRF_ENABLED = False
