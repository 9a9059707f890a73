package settings

// OnParsed has f told of every file the parser accepts from now on (nil
// stops it). The external tests use it to check each against
// schema/settings.json.
func OnParsed(f func(data []byte)) { parsed = f }
