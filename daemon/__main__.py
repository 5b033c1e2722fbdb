from parla.daemon.cli import script

script()
