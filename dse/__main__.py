from dse.cli import run

run()
