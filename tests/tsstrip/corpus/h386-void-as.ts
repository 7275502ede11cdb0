return void (0 as number)
