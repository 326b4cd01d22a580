"""The relational store (Postgres in production, a SQLite file embedded): SQLAlchemy 2 async.

``engine.create_engine`` builds the engine, ``uow.SqlUnitOfWorkFactory`` the units of work,
``migrate.upgrade`` brings the schema up to date with Alembic.
"""
