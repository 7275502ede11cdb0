return (new Date(0) as Date).getTime()
