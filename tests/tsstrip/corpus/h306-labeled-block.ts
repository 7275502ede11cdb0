foo: { break foo } return 1
