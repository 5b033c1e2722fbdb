from parla.daemon.cli import main

main()
