declare: { break declare } return 2
