return "a/b".replace(/[/]/g, "-")
