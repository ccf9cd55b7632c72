from unigate.cli.main import main

main()
