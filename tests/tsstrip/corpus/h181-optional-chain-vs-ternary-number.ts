const x = true; return x?.5:1
