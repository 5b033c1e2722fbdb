"""Turn-taking: who has the floor while Parla speaks and when the user's turn has ended, behind one
interface (`detection`, chosen by the setting in `choice`): left to the service (`service`), or
decided locally (`local`, with the floor's rules in `floor` and the end-of-turn model in
`end_of_turn`)."""
