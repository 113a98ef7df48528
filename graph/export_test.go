package graph

// GenericLists returns a copy of r whose lists all take gqlgen's generic path (marshalList):
// the reference that tests hold the flat paths to.
func GenericLists(r *Resolver) *Resolver {
	g := *r
	g.genericLists = true
	return &g
}
