COUNT = (COUNT or 0) + 1
return COUNT
