from daemon.cli import main

main()
