abstract: { break abstract } return 3
