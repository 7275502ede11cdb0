return /[/<>]+/gu.test("</>")
