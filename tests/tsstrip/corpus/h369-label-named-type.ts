type: for (;;) { break type } return 1
