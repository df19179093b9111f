return {name = (...)}
