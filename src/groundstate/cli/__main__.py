from groundstate.cli import main

main()
