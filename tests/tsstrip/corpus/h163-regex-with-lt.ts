return /<a>/g.test("<a>") && /a<b>c/.source.length
